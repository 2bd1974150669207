"""The test settings without the label-variation app: the study core and the other features must work with a
feature app left out (make test runs the core suite with these: bin/test-passes). Set through the environment,
as a deployment leaves an app out, so that the servers the tests start run without it too."""

import os

os.environ["LEFT_OUT_APPS"] = "label_variation"

from tests.settings import *  # noqa: F403
