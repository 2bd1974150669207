"""HTML views, thin wrappers over the services, one module per area:

work          the worker's pages: the project list, a page of items, qualification, crowd entry and finish
setup         creating and configuring a study: settings, lifecycle, members, qualification, import, clone
dashboard     following a study: progress, items, workers (block, speeders), exports
adjudication  settling the items the redundancy policy could not
reports       the agreement report

Every project route goes through access.project_for: 404 when the user may not see the project, 403 when
they may see it but not do this.
"""
