"""The login lockout as bin/serve serves it: a client that writes a new X-Forwarded-For on every attempt is
still one address (TRUSTED_PROXY_COUNT=0 here, and uvicorn must not read the header either)."""

import http.cookiejar
import re
import urllib.error
import urllib.parse
import urllib.request

import pytest

from tests.browser.conftest import manage

pytestmark = pytest.mark.browser
USERNAME, PASSWORD = "lockout-target", "a-long-password-1"


def attempt_login(base: str, password: str, forwarded_for: str) -> int:
    """One login through the form (fresh cookies and CSRF token); the status of the answer, redirects not followed."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), NoRedirect())
    form = opener.open(f"{base}/accounts/login/").read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form).group(1)
    body = urllib.parse.urlencode({"csrfmiddlewaretoken": token, "username": USERNAME, "password": password}).encode()
    request = urllib.request.Request(
        f"{base}/accounts/login/",
        data=body,
        headers={"X-Forwarded-For": forwarded_for, "Referer": f"{base}/accounts/login/"},
    )
    try:
        return opener.open(request).status
    except urllib.error.HTTPError as answer:
        return answer.code


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def test_rotating_x_forwarded_for_does_not_escape_the_lockout(demo_server):
    base = demo_server["url"]
    manage(demo_server, ["create_user", USERNAME, "--role", "worker", "--password", PASSWORD])
    failures = [attempt_login(base, "wrong", f"198.51.100.{number}") for number in range(1, 6)]
    assert failures[:4] == [200] * 4  # the form again, saying the password was wrong
    # The fifth failure reached the limit; the right password from "another address" is refused too.
    assert attempt_login(base, PASSWORD, "203.0.113.99") == 429
