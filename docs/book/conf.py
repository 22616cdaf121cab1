# Sphinx configuration of the detpath book (docs/build.sh builds it; see index.md for why Sphinx).
project = "detpath"
author = "the detpath authors"
copyright = "the detpath authors, Apache-2.0"
extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
root_doc = "index"
# Headings get anchors (`page.md#a-heading`) so links to a section are checked too.
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence"]
# The staging copy holds generated pages and the included root files; nothing else.
exclude_patterns = ["_build", "included/**"]
html_theme = "alabaster"
# Wide enough for the results tables (their last column is a file path).
html_theme_options = {"page_width": "1280px", "body_max_width": "none"}
html_static_path = []
html_copy_source = False
html_show_sourcelink = False
# Offline: no intersphinx, no remote images; every internal reference must resolve (-n -W).
nitpicky = True
suppress_warnings = []
