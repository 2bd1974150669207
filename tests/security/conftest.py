import sys


def report_requests(terminalreporter, module, calls, run):
    for who in module.CALLERS:
        mine = {label: count for (caller, label), count in calls.items() if caller == who}
        if mine:
            terminalreporter.write_line(f"{run}{who}: {sum(mine.values())} requests over {len(mine)} operations")
    busiest = calls.most_common(3)
    terminalreporter.write_line(
        f"{run}most requests: " + ", ".join(f"{who} {label} ({count})" for (who, label), count in busiest)
    )


def pytest_terminal_summary(terminalreporter):
    """How much the schemathesis runs sent, when they ran, and which links the stateful run followed."""
    module = sys.modules.get("tests.security.test_schemathesis")
    if module is None or not (module.CALLS or module.STATEFUL_CALLS):
        return
    terminalreporter.section("schemathesis")
    if module.CALLS:
        report_requests(terminalreporter, module, module.CALLS, "")
    if module.STATEFUL_CALLS:
        report_requests(terminalreporter, module, module.STATEFUL_CALLS, "stateful, ")
        followed = module.LINKS_FOLLOWED
        terminalreporter.write_line(
            f"stateful, links followed: {sum(followed.values())} times, {len(followed)} "
            "distinct (caller, link): "
            + ", ".join(f"{who} {link} ({count})" for (who, link), count in followed.most_common(5))
        )
