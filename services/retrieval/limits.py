"""RetrievePassages' limits and defaults: one definition, cited by the proto comments.

``search.request_violations`` states the rules over them once; the domain request checks them
when it is built, and the edge (``convert.py``) reports them, with the index-dependent ones
(unknown filter values), as field violations.
"""

from __future__ import annotations

from typing import Final

MAX_QUERY_CHARS: Final = 2000
MAX_TOP_K: Final = 100
DEFAULT_TOP_K: Final = 5
MAX_FILTER_VALUES: Final = 100
