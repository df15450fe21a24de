"""``python -m deferstitch`` and the ``deferstitch`` command.

Ctrl-C is exit status 130 without a traceback from this module's first line on, also while the
command's modules are still being imported (cli.main handles it once they are). Before it only
Python's own start-up runs: make's .venv keeps that short (setup.py's package_dir: no import
hook in site)."""
import sys


def run():
    try:
        sys.modules[__package__].main_program = True      # the process is ours: __init__.py
        from .cli import main
        status = main()
    except KeyboardInterrupt:
        status = 130
    if status == 130:
        forget_interrupt()
    sys.exit(status)


def forget_interrupt():
    """CPython (Python/pythonrun.c run_eval_code_obj) marks a KeyboardInterrupt raised inside
    eval() or exec() of a string (namedtuple's, dataclasses' at import) as unhandled even once it
    was caught, and Py_RunMain (Modules/main.c) then ends ``python -m deferstitch`` by SIGINT
    instead of our 130. Each exec of a string clears that mark first: an empty one for good."""
    exec("")


if __name__ == "__main__":
    run()
