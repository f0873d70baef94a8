"""``python -m factmem ARGS...``: the ``facts`` command (:mod:`factmem._cli`), the same as
the ``facts`` console script."""

from ._cli import main

if __name__ == "__main__":
    main()
