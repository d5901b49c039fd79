"""tests/lib.py - what the Python script tests (tests/t_*.py) share, as
tests/lib.sh does for the shell ones: the counting of checks and the last
line "N passed, N failed" that scripts/test.sh sums up.

    from lib import check, finish
    check(ok, "name", "why it failed")   # prints "ok   name" or "FAIL name: why"
    finish()                             # the last line; exit 1 if a check failed
"""
import sys

passed = 0
failed = 0


def check(ok, name, why=""):
    """One check: counts it and prints its line; returns ok."""
    global passed, failed
    if ok:
        passed += 1
        print("ok   " + name)
    else:
        failed += 1
        print("FAIL " + name + (": " + str(why)[:2000] if why else ""))
    return ok


def finish():
    """Prints "N passed, N failed" and exits, 1 when a check failed."""
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


def schema_first_error(schema):
    """A function doc -> None, or "path: message" of the first error of doc
    against schema (Draft 2020-12, checked here); for the tests that
    validate events against schemas/event.schema.json."""
    import jsonschema
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)

    def first_error(doc):
        errs = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
        if not errs:
            return None
        e = errs[0]
        return "%s: %s" % ("/".join(str(p) for p in e.path) or "(root)", e.message[:300])
    return first_error
