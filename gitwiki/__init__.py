"""gitwiki: a git-keyed, searchable markdown wiki for people and coding agents."""

import os

__version__ = "0.1.0"

# onnxruntime 1.29+ uploads telemetry from Linux and macOS and writes a device id under ~/.cache unless this is set
# before it loads: gitwiki connects only where the user asked it to (docs/security.md). Set here, before any entry
# path can import it (the embedder, the quantizer, fastembed's reranker); a user's own value is kept.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
