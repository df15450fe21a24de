"""``python -m deferstitch`` and the ``deferstitch`` command.

Ctrl-C is exit status 130 without a traceback from this module's first line on, also while the
command's modules are still being imported (cli.main handles it once they are). Before it only
Python's own start-up runs: make's .venv keeps that short (setup.py's package_dir: no import
hook in site)."""
import sys


def run():
    try:
        from .cli import main
        status = main()
    except KeyboardInterrupt:
        status = 130
    sys.exit(status)


if __name__ == "__main__":
    run()
