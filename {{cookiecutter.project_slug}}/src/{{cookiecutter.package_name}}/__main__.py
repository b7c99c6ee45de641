"""Allow ``python -m {{ cookiecutter.package_name }}``."""

from {{ cookiecutter.package_name }}.cli import main

raise SystemExit(main())
