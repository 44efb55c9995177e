"""handrail's Alembic environment (``env.py``) and revisions (``versions/``).

`handrail.store.db.Database.migrate` runs them; no ``alembic.ini`` is needed. To write a new
revision, run from the project root::

    from alembic import command
    from handrail.store.db import alembic_config

    command.revision(alembic_config(), "what changed", rev_id="0002")

rename the new file ``versions/v0002_<what>.py``, write its ``upgrade()`` by hand, and change
``handrail.store.tables`` to match (a test compares the two).
"""
