"""What the tests share, in one place.

* ``paths``: where the repository, the test data and the installed CLI are.
* ``corpus``: the public guard corpus (``tests/corpus/guard.jsonl``) and the policies its cases name.
* ``graph``: seeding a graph under its own marker label and checking what a test left in Neo4j.
* ``jobs``: sandbox jobs as the gateway builds them, with the default policy's limits.
* ``server``: the ``cypher-gateway serve`` child process and the graph it serves.
* ``shapes``: query shapes more than one test feeds the scope rewrite.
* ``env``: the environment of a child process (server, CLI, demo) aimed at the test Neo4j.
* ``mnr``: the header of the must-not-retrieve suites tests write.
* ``ports``: a free local TCP port.
* ``rows``: what a serialized answer holds (ids, secrets).
* ``tls``: a CA and a server certificate made for the test (and an unrelated CA).
* ``waiting``: bounded waits for an observable condition (never a wall-clock assertion).
* ``stub_runner``: a stand-in for the runner, for tests of what happens around a query.

Nothing here starts a service: the fixtures that do live in ``tests/integration/conftest.py``.
"""
