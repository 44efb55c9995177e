"""handrail's Alembic environment (``env.py``) and revisions (``versions/``).

`handrail.store.db.Database.migrate` runs them; no ``alembic.ini`` is needed. To write a new
revision, run from the project root::

    .venv/bin/python -c "from alembic import command; from handrail.store.db import alembic_config; command.revision(alembic_config(), 'what changed', rev_id='0002')"

then write its ``upgrade()`` by hand and change ``handrail.store.tables`` to match (a test
compares the two).
"""
