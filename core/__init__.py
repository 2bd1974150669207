"""The core app: accounts and roles, the access rules that need no feature (stored runs), authentication,
login limits and the request helpers (client address, throttles). Every feature app (annotation, jobs,
evaluation, models_backend) may import it; it imports none of them (import-linter contracts in
pyproject.toml; features hand it what it must know, such as the crowd study read with the user)."""
