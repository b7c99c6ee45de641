"""spark-submit's entry file: the package's command line, run on the driver.

`make package` copies it into dist/ beside the wheel and the environment archive, and
deploy/submit.sh hands it to spark-submit. It runs with the archive's Python, where the
package and the library are installed, so all it does is hand over to the CLI: a job on a
cluster takes the same arguments, settings and exit codes as one run by hand.
"""

import sys

from {{ cookiecutter.package_name }}.cli import main

if __name__ == "__main__":
    sys.exit(main())
