"""A throw-away task type written as a plug-in would be (a module and a template, nothing else): the
acceptance test of the task-type contract registers it and runs a study of it end to end."""
