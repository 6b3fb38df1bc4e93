// AUDIT-DESIGN §5 "Records" and "Replicas" on a real SQLite store: each audit with a verdict is a row, a failure's
// evidence a 0600 file beside it; every gateway folds the rows into its records once each, and takes the store's bars
// as they are, so an operator's clear lifts one, while its own bar stands until the store shows it.
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { pollAudits } from "../../../../gateway/audit/audit-poll.ts";
import { AuditRecords } from "../../../../gateway/audit/records.ts";
import { ProviderFaults } from "../../../../gateway/directory/provider-faults.ts";
import type { NewAudit, StoredAudit } from "../../../../gateway/keys/audit-store.ts";
import { SqliteKeyStore } from "../../../../gateway/keys/sqlite-store.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function open() {
  const dir = mkdtempSync(join(tmpdir(), "svc-audits-"));
  dirs.push(dir);
  return { dir, store: SqliteKeyStore.open(dir) };
}

const P = "ab".repeat(32);
const id = (n: number) => `aud_${n.toString(16).padStart(24, "0")}`;
const row = (n: number, verdict: StoredAudit["verdict"], at: number, bars: string[] = []): NewAudit => ({
  id: id(n), provider: P, verdict, at, bars, evidenceSha256: verdict === "fail" ? "e".repeat(64) : null,
});

describe("§5 Records: the store's rows, counted once", () => {
  it("pass, suspect and fail are counted apart; the last is the latest concluded; a row noted twice counts once", () => {
    const records = new AuditRecords();
    records.note(P, id(2), "suspect", 200);
    records.note(P, id(1), "pass", 100);
    records.note(P, id(3), "fail", 300, "e".repeat(64));
    records.note(P, id(3), "fail", 300, "e".repeat(64));
    expect(records.of(P)).toEqual({ passed: 1, failed: 1, suspect: 1, barring: 1, last: { id: id(3), at: 300, verdict: "fail" } });
    expect(records.failures(P)).toEqual([{ id: id(3), at: 300, evidence_sha256: "e".repeat(64), url: `/v1/audits/${id(3)}` }]);
  });
});

describe("§5 Records: a failure bars until an operator clears it", () => {
  it("barring counts the failures the store shows not cleared: a clear takes it to 0, `failed` stays", () => {
    const records = new AuditRecords();
    records.note(P, id(1), "fail", 100, "e".repeat(64));
    records.note(P, id(2), "fail", 200, "e".repeat(64));
    expect(records.of(P)).toMatchObject({ failed: 2, barring: 2 });
    records.syncBarring([{ provider: P }]);
    expect(records.of(P)).toMatchObject({ failed: 2, barring: 1 });
    records.syncBarring([]);
    expect(records.of(P)).toMatchObject({ failed: 2, barring: 0 });
  });
});

describe("§5 The audits table (SQLite)", () => {
  it("a failure's evidence is a 0600 file served by id; a pass keeps none; ids not of the auditor's form are never looked up", async () => {
    const { dir, store } = open();
    const audits = store.audits();
    await audits.add(row(1, "pass", 1_000));
    await audits.add(row(2, "fail", 2_000, ["enrollment:ptk_one"]), '{"svc_audit":1}');
    expect(statSync(join(dir, "audits", `${id(2)}.json`)).mode & 0o777).toBe(0o600);
    expect(await audits.evidence(id(2))).toBe('{"svc_audit":1}');
    expect([await audits.evidence(id(1)), await audits.evidence("../keys.sqlite"), await audits.evidence(id(9))]).toEqual([undefined, undefined, undefined]);
    expect(readdirSync(join(dir, "audits"))).toEqual([`${id(2)}.json`]);
    expect((await audits.since(1_500)).map((r) => r.id)).toEqual([id(2)]);
    expect((await audits.bars()).map((r) => [r.id, r.bars])).toEqual([[id(2), ["enrollment:ptk_one"]]]);
    // clearing lifts the bar, keeps the row and its evidence; a pass or an unknown id has nothing to clear
    expect((await audits.clear(id(2), 3_000))?.clearedAt).toBe(3_000);
    expect([await audits.bars(), await audits.clear(id(1)), await audits.clear(id(9))]).toEqual([[], undefined, undefined]);
    expect(await audits.evidence(id(2))).toBe('{"svc_audit":1}');
    await store.close();
  });
});

describe("§5 Replicas: every gateway polls the store", () => {
  it("a row another gateway wrote is counted and its bar applied by the first pass; a clear is lifted by the next", async () => {
    const { store } = open();
    const faults = new ProviderFaults();
    faults.listed({ reset: true, put: [{ id: P, model_ids: [], trust: "process", busy: false, waiting: 0, last_assigned: 0, signing_key: "1".repeat(64), sealing_key: "2".repeat(64), evidence_sha256: "3".repeat(64), enrollment: "ptk_one" }], gone: [] });
    await store.audits().add(row(1, "pass", Date.now()));
    await store.audits().add(row(2, "fail", Date.now(), ["enrollment:ptk_one"]), "{}");
    const records = new AuditRecords();
    const poll = pollAudits(store.audits(), records, (bars) => faults.syncBars(bars), (err) => { throw err; });
    await poll.ready;
    expect([records.of(P).passed, records.of(P).failed, records.of(P).barring, faults.barOf(P)]).toEqual([1, 1, 1, id(2)]);
    await store.audits().clear(id(2));
    poll.hint();
    await expect.poll(() => faults.barOf(P), { interval: 20, timeout: 5_000 }).toBeUndefined();
    // a row read again is not counted again; the cleared failure no longer bars (what `verify --providers` reads)
    expect([records.of(P).passed, records.of(P).failed, records.of(P).barring]).toEqual([1, 1, 0]);
    poll.stop();
    await store.close();
  });

  it("this gateway's own bar stands through a sync that does not show it yet, and is the store's once it does", () => {
    const faults = new ProviderFaults();
    faults.bar({ id: P }, id(5));
    faults.syncBars(new Map());
    expect(faults.barOf(P)).toBe(id(5));
    faults.syncBars(new Map([[`enrollment:provider:${P}`, id(5)]]));
    // now the store's: a sync without it (an operator cleared it) lifts it
    faults.syncBars(new Map());
    expect(faults.barOf(P)).toBeUndefined();
  });

  it("this gateway's own bar, cleared before its first poll, is lifted once the store returns the cleared row", async () => {
    const { store } = open();
    const faults = new ProviderFaults();
    faults.bar({ id: P }, id(6));
    await store.audits().add(row(6, "fail", Date.now(), [`enrollment:provider:${P}`]), "{}");
    await store.audits().clear(id(6));
    const poll = pollAudits(store.audits(), new AuditRecords(), (bars, returned) => faults.syncBars(bars, returned), (err) => { throw err; });
    await poll.ready;
    poll.stop();
    expect(faults.barOf(P)).toBeUndefined();
    await store.close();
  });
});
