"""The words and numbers every report medium shares (terminal, Markdown, HTML, plots): plain data.
Also :mod:`.safe_text`, which strips terminal control sequences from anything shown.
"""
