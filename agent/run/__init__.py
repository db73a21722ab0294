"""The run itself: a plan's steps carried out, alone or in groups that land together."""
