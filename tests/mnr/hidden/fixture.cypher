// The hidden-properties suite's graph (marker :MnrHidden): attempts with a 16-float embedding
// and a secret, a fact that holds an `embedding` key of its own (Fact hides nothing), and a
// KNOWS relationship with a secret. Every value to hide is unique in the fixture.
MATCH (n:MnrHidden) DETACH DELETE n;
CREATE (a:MnrHidden:Attempt {uid: 'hid-att-1', layers: ['project-a'], action: 'ran the migration twice',
  embedding: [0.9182736, 0.5647382, 0.1928374, 0.7463528, 0.3344556, 0.6677889, 0.1122334, 0.9988776,
              0.2468013, 0.1357924, 0.8642097, 0.5312468, 0.7777123, 0.4444987, 0.3030301, 0.6060602],
  secret: 'deploy key is hunter2-7f3a9c'})
CREATE (b:MnrHidden:Attempt {uid: 'hid-att-2', layers: ['project-a'], action: 'rolled back the release',
  embedding: [0.0101010, 0.0202020], secret: 'a'})
CREATE (f:MnrHidden:Fact {uid: 'hid-fact-1', layers: [], embedding: 'a fact may keep this embedding'})
CREATE (a)-[:KNOWS {uid: 'hid-knows-1', layers: [], since: 2020, secret: 'relationship secret 91c2be'}]->(f);
