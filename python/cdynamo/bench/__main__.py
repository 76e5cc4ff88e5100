"""Entry point of `python -m cdynamo.bench`."""
import sys

from .cli import main

sys.exit(main())
