#!/bin/bash
# NEO4J_AUTH=neo4j/<password> (as in the official image) or "none".
set -euo pipefail
cd "$NEO4J_HOME"
auth=${NEO4J_AUTH:-}
if [ "$auth" = "none" ]; then
  echo "dbms.security.auth_enabled=false" >> conf/neo4j.conf
elif [ -n "$auth" ] && [ ! -e data/dbms/auth.ini ]; then
  user=${auth%%/*}; password=${auth#*/}
  [ "$user" = "neo4j" ] || { echo "NEO4J_AUTH user must be neo4j" >&2; exit 1; }
  java -cp "lib/*" org.neo4j.cli.AdminTool dbms set-initial-password "$password" >/dev/null
fi
# Neo4j's own launcher decides the JVM flags; we run the command it prints.
# The server class is CommunityEntryPoint on 5.26 and Neo4jCommunity on 2026.x.
cmd=$(java -cp "lib/*" org.neo4j.server.startup.Neo4jCommand console --dry-run | grep -E 'CommunityEntryPoint|Neo4jCommunity' | tail -n1)
eval "exec $cmd"
