import assert from 'node:assert/strict';
import { parseStats, STATS_FORMAT } from '../control/orchestrator/podman/stats.js';

describe('podman driver: stats in numbers', () => {
  it("reads one ContainerStats object a line, bytes and percents as numbers (podman 4.3.1's output)", () => {
    assert.equal(STATS_FORMAT, '{{json .ContainerStats}}');
    const stdout = [
      '{"AvgCPU":1.22,"ContainerID":"b5e2386c","Name":"agt_1-a","PerCPU":[16569428,78585788],"CPU":1.2241634368994259,"CPUNano":95155216,"CPUSystemNano":20000000,"SystemNano":1795713026076910376,"MemUsage":610304,"MemLimit":67108864,"MemPerc":0.909423828125,"NetInput":586,"NetOutput":1470,"BlockInput":0,"BlockOutput":0,"PIDs":1,"UpTime":95155216,"Duration":95155216}',
      '{"AvgCPU":0,"ContainerID":"2e9fc158","Name":"agt_1-b","PerCPU":null,"CPU":0,"CPUNano":0,"CPUSystemNano":0,"SystemNano":0,"MemUsage":0,"MemLimit":0,"MemPerc":0,"NetInput":0,"NetOutput":0,"BlockInput":0,"BlockOutput":0,"PIDs":0,"UpTime":0,"Duration":0}',
      '',
    ].join('\n');
    const rows = parseStats(stdout);
    assert.deepEqual(rows.map(({ Name, CPU, MemUsage }) => ({ Name, CPU, MemUsage })), [
      { Name: 'agt_1-a', CPU: 1.2241634368994259, MemUsage: 610_304 },
      { Name: 'agt_1-b', CPU: 0, MemUsage: 0 },
    ]);
    assert.deepEqual(parseStats(''), []);
  });
});
