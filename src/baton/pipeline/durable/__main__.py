"""``python -m baton.pipeline.durable --database-url ... --runner module:function`` runs a worker."""

from baton.pipeline.durable.worker import main

main()
