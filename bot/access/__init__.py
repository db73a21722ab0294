"""Who may see what: `oauth` (GitHub as a signed-in person sees it: the App's OAuth endpoints, who
they are, what they may read) and `signin` (signing in to the run pages, and the gate in front of
them)."""
