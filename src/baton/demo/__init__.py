"""The demo workspace: seed 000's finance case, served by `baton demo`.

Its parts are imported from their modules (``baton.demo.workspace.build_demo_workspace``,
``baton.demo.data.build_demo_database``, ``baton.demo.verified``, ``baton.demo.service``):
the package itself exports nothing, so importing it builds and loads nothing.
"""

__all__: list[str] = []
