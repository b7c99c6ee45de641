"""Allow ``python -m {{ cookiecutter.package_name }}``."""

from {{ cookiecutter.package_name }}.pipeline import main

raise SystemExit(main())
