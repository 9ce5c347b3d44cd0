"""The jinja2 set-up shared by everything gitwiki renders (index blocks, the Action's job summary).

jinja2 is imported on first render only: the index-blocks hook often finds its output memoized and never
renders (see `index_blocks.render_block`).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

import gitwiki

if TYPE_CHECKING:
    import jinja2


def shipped_dir() -> Path:
    """gitwiki's own templates: gitwiki/templates/ in the wheel, the top-level templates/ in a source checkout."""
    package = Path(gitwiki.__file__).parent
    shipped = package / "templates"
    return shipped if shipped.is_dir() else package.parent / "templates"


@functools.cache
def environment(search: tuple[str, ...]) -> jinja2.Environment:
    """A strict environment over the folders `search` (first match wins), with the markdown filters
    `md_text` (escape brackets and backslashes in link text) and `md_link` (percent-encode a link target)."""
    import jinja2.sandbox

    # Sandboxed: a checkout's own template (.gitwiki/templates/, [index_blocks] template) is a stranger's code, and
    # plain jinja2 reaches Python from it (`cycler.__init__.__globals__.os`); the sandbox refuses that.
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        loader=jinja2.FileSystemLoader(list(search)),
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["md_text"] = lambda s: re.sub(r"([\[\]\\])", r"\\\1", str(s))
    env.filters["md_link"] = lambda s: quote(str(s), safe="/#-._~!$&'*+,;=:@")
    return env
