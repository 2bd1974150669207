"""The settings the test suite runs with: the app's own, DEBUG off as in production. The app refuses to start
without a secret key when DEBUG is off, so the suite gives itself one (the servers and commands it starts
inherit it)."""

import os

os.environ.setdefault("SECRET_KEY", "test-suite-key-not-for-production")

from config.settings import *  # noqa: F403
