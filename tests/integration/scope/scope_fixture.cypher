// The scope-rewrite test fixture: a small agent memory graph in three layers.
// Seeded by tests/conftest_scope.py with write credentials (never through the agent tools).
// Every node carries :ScopeFixture so it coexists with other tests' data; the
// harness deletes and re-creates only these nodes. Property `id` names each element.
// Text that must never reach a principal contains SECRET-A (project-a only) or
// SECRET-B (project-b only); global text contains neither.
MATCH (n:ScopeFixture) DETACH DELETE n;
CREATE
  // --- repositories -> tasks -> attempts -------------------------------------------------
  (ra:ScopeFixture:Repository {id: 'repo-a', name: 'repo-a', layers: ['project-a']}),
  (rb:ScopeFixture:Repository {id: 'repo-b', name: 'SECRET-B repo', layers: ['project-b']}),
  (rg:ScopeFixture:Repository {id: 'repo-g', name: 'shared-tools', layers: []}),
  (ta:ScopeFixture:Task {id: 'task-a1', repository: 'repo-a', title: 'fix flaky login test', layers: ['project-a']}),
  (tb:ScopeFixture:Task {id: 'task-b1', repository: 'repo-b', title: 'SECRET-B migrate billing', layers: ['project-b']}),
  (tg:ScopeFixture:Task {id: 'task-g1', repository: 'repo-g', title: 'bump linters', layers: []}),
  (ra)-[:HAS_TASK {id: 'e-ra-ta', layers: []}]->(ta),
  (rb)-[:HAS_TASK {id: 'e-rb-tb', layers: ['project-b']}]->(tb),
  (rg)-[:HAS_TASK {id: 'e-rg-tg', layers: []}]->(tg),
  (a1:ScopeFixture:Attempt {id: 'att-a1-1', seq: 1, action: 'rerun test', observation: 'passes locally', check: 'passed', layers: ['project-a']}),
  (a2:ScopeFixture:Attempt {id: 'att-a1-2', seq: 2, action: 'pin chromium', observation: 'still flaky', check: 'failed', layers: ['project-a']}),
  // A project-b engineer's attempt on the same task: hidden from project-a on any path.
  (ah:ScopeFixture:Attempt {id: 'att-a1-h', seq: 3, action: 'SECRET-B use prod token', observation: 'SECRET-B works', check: 'passed', layers: ['project-b']}),
  (a4:ScopeFixture:Attempt {id: 'att-a1-4', seq: 4, action: 'retry with mock', observation: 'unclear', check: 'unverified', outdated: true, layers: ['project-a']}),
  (ta)-[:HAS_ATTEMPT {id: 'e-ta-a1', layers: []}]->(a1),
  (ta)-[:HAS_ATTEMPT {id: 'e-ta-a2', layers: []}]->(a2),
  (ta)-[:HAS_ATTEMPT {id: 'e-ta-ah', layers: []}]->(ah),   // a visible (global) edge to a hidden node
  (ta)-[:HAS_ATTEMPT {id: 'e-ta-a4', layers: []}]->(a4),
  (a1)-[:NEXT {id: 'e-a1-a2', layers: []}]->(a2),
  (a2)-[:NEXT {id: 'e-a2-ah', layers: []}]->(ah),
  (ah)-[:NEXT {id: 'e-ah-a4', layers: []}]->(a4),          // a4 is reachable from a2 only through the hidden ah
  (b1:ScopeFixture:Attempt {id: 'att-b1-1', seq: 1, action: 'SECRET-B dump ledger', observation: 'SECRET-B 4 GB', check: 'failed', layers: ['project-b']}),
  (tb)-[:HAS_ATTEMPT {id: 'e-tb-b1', layers: ['project-b']}]->(b1),
  (g1:ScopeFixture:Attempt {id: 'att-g1-1', seq: 1, action: 'ruff --fix', observation: 'clean', check: 'passed', layers: []}),
  (tg)-[:HAS_ATTEMPT {id: 'e-tg-g1', layers: []}]->(g1),
  // --- decisions, corrections, claims ----------------------------------------------------
  (d0:ScopeFixture:Decision {id: 'dec-a0', text: 'use sqlite for tests', layers: ['project-a']}),
  (d1:ScopeFixture:Decision {id: 'dec-a1', text: 'use postgres for tests', layers: ['project-a']}),
  (d1)-[:SUPERSEDES {id: 'e-d1-d0', layers: []}]->(d0),
  (db0:ScopeFixture:Decision {id: 'dec-b0', text: 'SECRET-B keep ledger in csv', layers: ['project-b']}),
  (db1:ScopeFixture:Decision {id: 'dec-b1', text: 'SECRET-B ledger to s3', layers: ['project-b']}),
  (db1)-[:SUPERSEDES {id: 'e-db1-db0', layers: ['project-b']}]->(db0),
  (dg:ScopeFixture:Decision {id: 'dec-g1', text: 'python 3.11 everywhere', layers: []}),
  // A global decision superseded by a project-b one: the correction edge leads into project-b.
  (dgb:ScopeFixture:Decision {id: 'dec-gb', text: 'SECRET-B python 3.12 for billing', layers: ['project-b']}),
  (dgb)-[:SUPERSEDES {id: 'e-dgb-dg', layers: []}]->(dg),
  (c1:ScopeFixture:Claim {id: 'claim-a1', text: 'postgres catches more bugs', layers: ['project-a']}),
  (c2:ScopeFixture:Claim {id: 'claim-b1', text: 'SECRET-B postgres costs too much', layers: ['project-b']}),
  (c3:ScopeFixture:Claim {id: 'claim-g1', text: 'containers make postgres cheap', layers: []}),
  (c1)-[:SUPPORTS {id: 'e-c1-d1', layers: []}]->(d1),
  (c2)-[:DISAGREES {id: 'e-c2-d1', layers: []}]->(d1),       // a hidden claim against a visible decision
  (c3)-[:SUPPORTS {id: 'e-c3-d1', layers: []}]->(d1),
  (c3)-[:CONTRADICTS {id: 'e-c3-c2', layers: []}]->(c2),
  // --- facts in layers -------------------------------------------------------------------
  (fg1:ScopeFixture:Fact {id: 'fact-g1', text: 'CI runs on 2 cores', layers: []}),
  (fg2:ScopeFixture:Fact {id: 'fact-g2', text: 'main is protected', layers: []}),            // an explicit empty list: global
  (fa1:ScopeFixture:Fact {id: 'fact-a1', text: 'repo-a uses pnpm', layers: ['project-a']}),
  (fa2:ScopeFixture:Fact {id: 'fact-a2', text: 'repo-a deploys on friday', layers: ['project-a']}),
  (fb1:ScopeFixture:Fact {id: 'fact-b1', text: 'SECRET-B vault path /kv/billing', layers: ['project-b']}),
  (fb2:ScopeFixture:Fact {id: 'fact-b2', text: 'SECRET-B api key rotates monthly', layers: ['project-b']}),
  (fab:ScopeFixture:Fact {id: 'fact-ab', text: 'both projects share the CDN', layers: ['project-b', 'project-a']}),
  (fbad:ScopeFixture:Fact {id: 'fact-bad', text: 'SECRET-B malformed layers', layers: 'project-a'}), // a string, not a list: hidden from everyone
  (fg1)-[:RELATES {id: 'e-fg1-fg2', note: 'SECRET-B edge note', layers: ['project-b']}]->(fg2), // hidden edge between global nodes
  (fg1)-[:RELATES {id: 'e-fg1-fa1', layers: []}]->(fa1),
  (fa1)-[:RELATES {id: 'e-fa1-fb1', layers: []}]->(fb1),
  (fb1)-[:RELATES {id: 'e-fb1-fa2', layers: ['project-b']}]->(fa2),   // fa1 -> fa2 only through fb1
  (fa1)-[:RELATES {id: 'e-fa1-fab', layers: []}]->(fab),
  (fab)-[:RELATES {id: 'e-fab-fa2', layers: []}]->(fa2),
  (fb2)-[:CONTRADICTS {id: 'e-fb2-fa1', layers: []}]->(fa1),
  (ta)-[:ABOUT {id: 'e-ta-fa1', layers: []}]->(fa1),
  (ta)-[:ABOUT {id: 'e-ta-fb2', layers: []}]->(fb2),
  // --- secrets: a label counted in side-channel cases ------------------------------------
  (sg:ScopeFixture:Secret {id: 'secret-g', text: 'public placeholder', layers: []}),
  (sa:ScopeFixture:Secret {id: 'secret-a', text: 'SECRET-A staging password', layers: ['project-a']}),
  (sb1:ScopeFixture:Secret {id: 'secret-b1', text: 'SECRET-B prod password', layers: ['project-b']}),
  (sb2:ScopeFixture:Secret {id: 'secret-b2', text: 'SECRET-B signing key', layers: ['project-b']}),
  (sa)-[:NEAR {id: 'e-sa-sb1', layers: []}]->(sb1),
  (sg)-[:NEAR {id: 'e-sg-sa', layers: []}]->(sa);
