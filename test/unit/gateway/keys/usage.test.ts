// Usage per key, provider and UTC day on a real SQLite key store: which day a request counts on (UTC, not
// the server's zone), the 30-day window, each key's series with its empty days, totals per user and provider,
// and that a user reads only their own keys' days.
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { SqliteKeyStore } from "../../../../gateway/keys/sqlite-store.ts";
import { seriesByKey, sumCounts, totalsBy, USAGE_DAYS, usageWindow, utcDay } from "../../../../gateway/keys/usage.ts";
import { UserKeys } from "../../../../gateway/keys/user-keys.ts";
import { Admins, parseAdminEmails } from "../../../../gateway/web/admins.ts";
import { keyUsageSection, operatorUsagePage } from "../../../../gateway/web/usage-pages.ts";

const dir = mkdtempSync(join(tmpdir(), "svc-usage-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const DAY = 86_400_000;
const NOW = Date.UTC(2025, 2, 31, 10, 30); // 31 March 2025, 10:30 UTC
const tokens = (prompt: number, completion: number) => ({ prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion });

async function freshStore(name: string) {
  mkdirSync(join(dir, name));
  const store = SqliteKeyStore.open(join(dir, name));
  const users = new UserKeys(store, (err) => { throw err; }, 3_600_000);
  const alice = await store.upsertUser({ issuer: "https://id.test", subject: "a", email: "alice@example.test", name: "Alice" });
  const bob = await store.upsertUser({ issuer: "https://id.test", subject: "b", email: "bob@example.test", name: "Bob" });
  const laptop = (await store.createKey(alice, "laptop")).key.id;
  const server = (await store.createKey(alice, "server")).key.id;
  const bobs = (await store.createKey(bob, "bob")).key.id;
  const user = (keyId: string, userId: number) => ({ kind: "user" as const, keyId, userId });
  return { store, users, alice, bob, laptop: user(laptop, alice), server: user(server, alice), bobs: user(bobs, bob) };
}

describe("usage per key and UTC day", () => {
  it("a day is the UTC calendar day: the last millisecond before midnight UTC and midnight itself are two days", async () => {
    const midnight = Date.UTC(2025, 0, 1);
    expect(utcDay(midnight - 1)).toBe("2024-12-31");
    expect(utcDay(midnight)).toBe("2025-01-01");
    const { store, users, laptop } = await freshStore("midnight");
    users.noteUsage(laptop, tokens(1, 2), "prov_a", midnight - 1);
    users.noteUsage(laptop, tokens(10, 20), "prov_a", midnight);
    users.noteUsage(laptop, tokens(100, 200), "prov_a", midnight + DAY - 1);
    await users.close();
    const rows = await store.dailyUsage("2024-12-01");
    expect(rows.map((r) => [r.day, r.requests, r.promptTokens, r.completionTokens])).toEqual([
      ["2024-12-31", 1, 1, 2],
      ["2025-01-01", 2, 110, 220],
    ]);
    await store.close();
  });

  it("the window is the last 30 UTC days ending today, oldest first, across month and year ends", async () => {
    const window = usageWindow(USAGE_DAYS, NOW);
    expect(window).toHaveLength(30);
    expect(window[0]).toBe("2025-03-02");
    expect(window.at(-1)).toBe("2025-03-31");
    expect(new Set(window).size).toBe(30);
    expect(usageWindow(3, Date.UTC(2025, 0, 1, 0, 0, 0, 1))).toEqual(["2024-12-30", "2024-12-31", "2025-01-01"]);
    expect(usageWindow(2, Date.UTC(2024, 2, 1, 23, 59))).toEqual(["2024-02-29", "2024-03-01"]);
  });

  it("each key's series has every day of the window, zeros where it was not used, and nothing older than 30 days", async () => {
    const { store, users, alice, laptop, server } = await freshStore("window");
    users.noteUsage(laptop, tokens(7, 3), "prov_a", NOW - 30 * DAY); // 1 March: one day too old
    users.noteUsage(laptop, tokens(5, 5), "prov_a", NOW - 29 * DAY); // 2 March: the window's first day
    users.noteUsage(laptop, tokens(2, 1), "prov_a", NOW);
    users.noteUsage(laptop, tokens(4, 1), "prov_b", NOW); // another provider, same day: summed in the series
    users.noteUsage(server, tokens(9, 9), "prov_b", NOW - DAY);
    const window = usageWindow(USAGE_DAYS, NOW);
    const rows = await users.dailyUsage(window[0]!, alice);
    expect(rows.some((r) => r.day === "2025-03-01")).toBe(false);
    const series = seriesByKey(rows, window);
    const laptopDays = series.get(laptop.keyId)!;
    expect(laptopDays.map((d) => d.day)).toEqual(window);
    expect(laptopDays[0]).toEqual({ day: "2025-03-02", requests: 1, promptTokens: 5, completionTokens: 5 });
    expect(laptopDays[29]).toEqual({ day: "2025-03-31", requests: 2, promptTokens: 6, completionTokens: 2 });
    expect(laptopDays.slice(1, 29).every((d) => d.requests === 0 && d.promptTokens === 0)).toBe(true);
    expect(sumCounts(laptopDays)).toEqual({ requests: 3, promptTokens: 11, completionTokens: 7 });
    expect(series.get(server.keyId)![28]).toEqual({ day: "2025-03-30", requests: 1, promptTokens: 9, completionTokens: 9 });
    await users.close();
    await store.close();
  });

  it("a user reads only their own keys' days; the operator's totals group every key by owner and by provider", async () => {
    const { store, users, alice, bob, laptop, server, bobs } = await freshStore("totals");
    users.noteUsage(laptop, tokens(10, 1), "prov_a", NOW);
    users.noteUsage(server, tokens(10, 1), "prov_b", NOW - 2 * DAY);
    users.noteUsage(bobs, tokens(100, 50), "prov_b", NOW);
    users.noteUsage({ kind: "operator", keyId: "op_0123456789abcdef" }, tokens(1, 1), "prov_a", NOW);
    users.noteUsage(bobs, tokens(1000, 1000), "prov_a", NOW - 40 * DAY); // outside the window
    const window = usageWindow(USAGE_DAYS, NOW);
    expect(new Set((await users.dailyUsage(window[0]!, alice)).map((r) => r.keyId))).toEqual(new Set([laptop.keyId, server.keyId]));
    expect((await users.dailyUsage(window[0]!, bob)).map((r) => r.keyId)).toEqual([bobs.keyId]);

    const all = await users.dailyUsage(window[0]!);
    const owners = new Map((await store.listAllKeys()).map((k) => [k.id, k.userId]));
    const byUser = totalsBy(all, window, (r) => owners.get(r.keyId) ?? "operator");
    expect([...byUser]).toEqual([
      [bob, { requests: 1, promptTokens: 100, completionTokens: 50 }],
      [alice, { requests: 2, promptTokens: 20, completionTokens: 2 }],
      ["operator", { requests: 1, promptTokens: 1, completionTokens: 1 }],
    ]);
    const byProvider = totalsBy(all, window, (r) => r.providerId);
    expect(Object.fromEntries(byProvider)).toEqual({
      prov_b: { requests: 2, promptTokens: 110, completionTokens: 51 },
      prov_a: { requests: 2, promptTokens: 11, completionTokens: 2 },
    });
    await users.close();
    await store.close();
  });

  it("counts survive a reopen: batches are added to what the file holds, not written over it", async () => {
    const first = await freshStore("reopen");
    first.users.noteUsage(first.laptop, tokens(3, 4), "prov_a", NOW);
    await first.users.close();
    await first.store.close();
    const store = SqliteKeyStore.open(join(dir, "reopen"));
    const users = new UserKeys(store, (err) => { throw err; }, 3_600_000);
    users.noteUsage(first.laptop, tokens(1, 1), "prov_a", NOW);
    expect(await users.dailyUsage("2025-03-31")).toEqual([
      { day: "2025-03-31", keyId: first.laptop.keyId, providerId: "prov_a", requests: 2, promptTokens: 4, completionTokens: 5 },
    ]);
    await users.close();
    await store.close();
  });
});

describe("the usage views' markup and the admin list", () => {
  const window = usageWindow(3, NOW);
  const days = window.map((day, i) => ({ day, requests: i, promptTokens: 10 * i, completionTokens: i }));
  const key = {
    id: "key_000000000000000000000001", name: "<script>alert(1)</script>", prefix: "sk-svc_ab12…", createdAt: 0,
    lastUsedAt: NOW, revokedAt: null, requests: 3, promptTokens: 30, completionTokens: 3,
  };

  it("a key's chart has one bar per day with its numbers, and nothing a user named becomes markup", async () => {
    const section = keyUsageSection({ keys: [key], series: new Map([[key.id, days]]), admin: false }).text;
    expect(section).not.toContain("<script>alert");
    expect(section).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(section.match(/<g class="day"/g)).toHaveLength(3);
    expect(section).toContain(`data-day="2025-03-31" data-requests="2" data-prompt-tokens="20" data-completion-tokens="2"`);
    expect(section).toContain(`data-total="requests" data-value="3"`);
    expect(section).not.toContain("/settings/usage");
    expect(keyUsageSection({ keys: [], series: new Map(), admin: true }).text).toContain(`href="/settings/usage"`);
  });

  it("the operator page escapes owners and provider ids", async () => {
    const page = operatorUsagePage({
      window,
      total: days,
      users: [{ label: "<img src=x onerror=alert(1)>", keys: 1, counts: sumCounts(days), lastUsedAt: NOW, lastDay: "2025-03-31" }],
      providers: [{ providerId: "<b>p</b>", counts: sumCounts(days) }],
    });
    expect(page).not.toContain("<img src=x");
    expect(page).not.toContain("<b>p</b>");
    expect(page).toContain("&lt;img src=x onerror=alert(1)&gt;");
  });

  it("admins are listed by email, compared without case; a bad entry is refused by name", async () => {
    expect(parseAdminEmails(" Root@Example.test, ops@example.org ,")).toEqual(["root@example.test", "ops@example.org"]);
    expect(parseAdminEmails(undefined)).toEqual([]);
    expect(() => parseAdminEmails("ops@example.org, nope")).toThrow(`"nope" is not an email address`);
    const admins = new Admins(parseAdminEmails("root@example.test"), async () => false);
    expect(admins.isAdmin({ id: 1, email: "ROOT@example.test", name: null })).toBe(true);
    expect(admins.isAdmin({ id: 2, email: "bob@example.test", name: "root@example.test" })).toBe(false);
    expect(admins.isAdmin({ id: 3, email: null, name: null })).toBe(false);
  });
});
