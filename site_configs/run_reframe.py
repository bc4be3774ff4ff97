#!/usr/bin/env python3
"""ReFrame's command line from its module, for a ReFrame without a `reframe` command on
PATH (installed with `pip --target DIR`: the module is on PYTHONPATH, the command in
DIR/bin). `python3 site_configs/run_reframe.py ARGS` is `reframe ARGS` (the package has no
__main__, so `python3 -m reframe` does not work). site_configs/setup_env.sh's
mempath_reframe picks `reframe` first, then this."""
import sys

if __name__ == '__main__':
    from reframe.frontend.cli import main
    sys.argv[0] = 'reframe'
    sys.exit(main())
