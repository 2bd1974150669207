#!/usr/bin/env python
import os
import sys
from importlib import import_module

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    # A setting the environment lacks or gets wrong is the operator's to fix: one line saying what to set,
    # not a traceback (the settings still refuse to start, as the servers do).
    try:
        import_module(os.environ["DJANGO_SETTINGS_MODULE"])
    except ImproperlyConfigured as error:
        sys.exit(f"manage.py: {error}")
    execute_from_command_line(sys.argv)
