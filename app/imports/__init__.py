"""``companion import``: conversations brought from ChatGPT, Claude and Open WebUI, and
Companion's own export (``companion``: its chats and memories, docs/export.md).

``reading`` opens an export (a zip or a JSON file), refuses what is unsafe or not an
export, tells the app that made it by its content and streams its conversations; one
module per app (``chatgpt``, ``claude``, ``openwebui``) turns a conversation into the
store's ``ImportedChat``; ``importing`` checks the whole file, then keeps each chat in a
transaction of its own and reports what went in and what was skipped, and why.
"""

from app.imports.common import BadExport
from app.imports.importing import Report, import_export

__all__ = ["BadExport", "Report", "import_export"]
