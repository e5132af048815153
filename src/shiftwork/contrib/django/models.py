"""No Django models: shiftwork's tables are its own (its migrations, not Django's).

The module exists because Django sends ``post_migrate`` only to apps that have a models
module, and that signal is what upgrades shiftwork's tables at every ``manage.py migrate``
(apps.py)."""
