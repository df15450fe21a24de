"""``python -m deferstitch`` and the ``deferstitch`` command.

Ctrl-C is exit status 130 without a traceback at any moment, also while the command's modules
are still being imported (cli.main handles it once they are)."""
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
