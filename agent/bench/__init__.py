"""`cra bench`: replay a repository's past bug fixes and score models on them.

tasks.py holds the task format (SWE-bench's instance schema) and results.py the result records
that `cra bench run` appends and `cra bench report` reads.
"""
