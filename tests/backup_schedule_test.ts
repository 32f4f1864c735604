/**
 * Scheduled backups (lib/backup/schedule.ts) on a fake clock: a tick runs
 * once across two instances, `keep` deletes only the schedule's own
 * backups, a failure is logged and alerted, and the settings check the
 * schedule.
 */
import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  startServer,
} from "./_server.ts";
import { BackupSchedule } from "../lib/backup/schedule.ts";

forEachDb("scheduled backups", async (t, db) => {
  const s = await startServer(db);
  try {
    const token = await s.adminToken();
    await t.step("the settings check the schedule", async () => {
      const bad = await s.request("PATCH", "/api/v1/sys/settings", {
        token,
        body: { backups: { cron: "every night" } },
      });
      assertStatus(bad, 400);
      assert(/backups\.cron/.test(JSON.stringify(bad.data)), bad.text);
      const ok = await s.request("PATCH", "/api/v1/sys/settings", {
        token,
        body: { backups: { cron: "*/10 * * * *", keep: 2 } },
      });
      assertStatus(ok, 200);
      assertEquals(ok.data.backups, { cron: "*/10 * * * *", keep: 2 });
    });
    const hand = await s.request("POST", "/api/v1/sys/backups", {
      token,
      body: { name: "by-hand" },
    });
    assertStatus(hand, 201);
    // A fake clock starting just after a tick of */10.
    let now = Date.UTC(2026, 10, 28, 3, 0, 5);
    const logs: string[] = [];
    const alerts: string[] = [];
    const make = () =>
      new BackupSchedule({
        storage: s.app.storage,
        backups: s.app.backups,
        settings: () => s.app.settings.read(),
        now: () => now,
        log: {
          info: (m) => logs.push(m),
          error: (m, d) => logs.push(`${m} ${JSON.stringify(d)}`),
        },
        alert: (e) => {
          alerts.push(e);
          return Promise.resolve();
        },
      });
    const a = make(), b = make();
    await t.step("no tick yet, nothing runs", async () => {
      now += 60_000;
      assertEquals(await a.look(), undefined);
      assertEquals(await b.look(), undefined);
    });
    await t.step("a tick runs once across two instances", async () => {
      now = Date.UTC(2026, 10, 28, 3, 10, 2);
      const ran = [await a.look(), await b.look()];
      assertEquals(ran.filter((x) => x !== undefined).length, 1, "one claims");
      const names = (await s.app.backups.list()).map((x) => x.name).sort();
      assertEquals(names, [
        "by-hand.tar.gz",
        "mb_auto_20261128T031000Z.tar.gz",
      ]);
    });
    await t.step("keep deletes only the schedule's own backups", async () => {
      for (const minute of [20, 30, 40]) {
        now = Date.UTC(2026, 10, 28, 3, minute, 1);
        assert(await a.look() !== undefined, `tick ${minute}`);
      }
      const names = (await s.app.backups.list()).map((x) => x.name).sort();
      assertEquals(names, [
        "by-hand.tar.gz",
        "mb_auto_20261128T033000Z.tar.gz",
        "mb_auto_20261128T034000Z.tar.gz",
      ]);
    });
    await t.step("a failure is logged and alerted", async () => {
      // The next backup's name is taken: creating it fails.
      await Deno.writeFile(
        `${s.dataDir}/backups/mb_auto_20261128T035000Z.tar.gz`,
        new Uint8Array([1]),
      );
      now = Date.UTC(2026, 10, 28, 3, 50, 3);
      assert(await a.look() !== undefined);
      assertEquals(alerts.length, 1);
      assert(/one of that name exists/.test(alerts[0]), alerts[0]);
      assert(logs.some((l) => l.startsWith("scheduled backup failed")));
    });
    await a.stop();
    await b.stop();
  } finally {
    await s.close();
  }
});
