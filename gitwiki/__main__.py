import sys

owning = "--owner-fd" in sys.argv
if owning:
    # The owner `serve.owner.start` spawns (`-P -m gitwiki -C DIR serve --owner-fd N`): its model starts loading
    # before the CLI's imports and parsing, in a process of its own (docs/research/sessions-start.md).
    from gitwiki.search.model_process import load_for_owner

    load_for_owner(sys.argv[2] if sys.argv[1:2] == ["-C"] else ".")

from gitwiki.cli import end_now, main  # noqa: E402  (after the owner's load is asked for)

code = main()
if owning:
    # An owner stopped while its model still loads (or is being copied, index/model_copy.py) on a thread: the
    # interpreter's teardown ran onnxruntime's destructors beside that thread, and the C++ runtime aborted the
    # process ("terminate called without an active exception", SIGABRT). Its index is closed by now: end here.
    end_now(code or 0)
sys.exit(code)
