"""The containers' entry point: an isolated interpreter that loads only the image's own code.

    python3 -I -S -B /opt/sandbox/sandbox/launch.py                 the sandbox program
    python3 -I -S -B /opt/sandbox/sandbox/launch.py forwarder ...   the forwarder

``-I`` ignores every ``PYTHON*`` variable and the user's site directory and keeps the
working directory off ``sys.path``; ``-S`` skips ``site`` (no ``.pth`` file runs); ``-B``
writes no bytecode (the root filesystem is read-only; the image ships compiled files). So
``sys.path`` holds the standard library and exactly the two directories the image lays
out next to this package: the package's parent and ``lib/`` (the pinned dependencies).
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "lib")]

if __name__ == "__main__":
    if sys.argv[1:2] == ["forwarder"]:
        from sandbox.forwarder import main as forwarder_main

        sys.exit(forwarder_main(sys.argv[2:]))
    from sandbox.main import main

    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # skip the interpreter's teardown: the container ends with this process
