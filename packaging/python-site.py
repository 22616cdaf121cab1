"""Where `make install` puts the detpath Python module for the interpreter
running this script and an install prefix (argv[1]).

Prints two lines: `venv` or `prefix`, then the directory.

- A virtual environment: its own site directory (what `pip install` in the
  venv uses). The prefix is for the C library only.
- Debian's python3: PREFIX/lib/pythonX.Y/dist-packages. That is the directory
  Debian's interpreter reads for /usr/local (site.py), so the default prefix
  needs no PYTHONPATH; Debian's `posix_local` scheme would add a second
  `local/` under any other prefix, and `posix_prefix`'s site-packages is a
  name Debian's interpreter never reads.
- Any other CPython: the `posix_prefix` scheme's platlib for the prefix (the
  module holds a compiled extension).
"""

import sys
import sysconfig

prefix = sys.argv[1]
if sys.prefix != sys.base_prefix:
    print("venv")
    print(sysconfig.get_path("platlib"))
elif "deb_system" in sysconfig.get_scheme_names():
    print("prefix")
    print(f"{prefix}/lib/python{sys.version_info[0]}.{sys.version_info[1]}/dist-packages")
else:
    print("prefix")
    print(sysconfig.get_path("platlib", "posix_prefix", vars={"base": prefix, "platbase": prefix}))
