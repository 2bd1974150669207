import sys


def pytest_terminal_summary(terminalreporter):
    """How much the schemathesis run sent, when it ran."""
    module = sys.modules.get("tests.security.test_schemathesis")
    calls = getattr(module, "CALLS", None)
    if not calls:
        return
    terminalreporter.section("schemathesis")
    for who in module.CALLERS:
        mine = {label: count for (caller, label), count in calls.items() if caller == who}
        if mine:
            terminalreporter.write_line(f"{who}: {sum(mine.values())} requests over {len(mine)} operations")
    busiest = calls.most_common(3)
    terminalreporter.write_line("most requests: " + ", ".join(f"{who} {label} ({count})" for (who, label), count in busiest))
