/**
 * A backup schedule (a cron expression, read in UTC) in words, for the
 * common shapes: every N minutes, hourly, daily, on weekdays, monthly, the
 * nicknames. Anything else gets no words ("" — the page then shows the
 * expression alone); the server checks every schedule when it is saved.
 *
 * @module
 */

const DAYS = [
  "Sunday",
  "Monday",
  "Tuesday",
  "Wednesday",
  "Thursday",
  "Friday",
  "Saturday",
];
const DAY_NAMES = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

const NICKNAMES: Record<string, string> = {
  "@yearly": "Every year on 1 January at 00:00 UTC",
  "@annually": "Every year on 1 January at 00:00 UTC",
  "@monthly": "On the 1st of every month at 00:00 UTC",
  "@weekly": "Every Sunday at 00:00 UTC",
  "@daily": "Every day at 00:00 UTC",
  "@midnight": "Every day at 00:00 UTC",
  "@hourly": "Every hour, on the hour",
};

const NUMBER = /^\d{1,2}$/;

function pad(n: number): string {
  return String(n).padStart(2, "0");
}

/** `3,15` → [3, 15] within [lo, hi]; undefined for anything else. */
function numbers(field: string, lo: number, hi: number): number[] | undefined {
  const parts = field.split(",");
  if (!parts.every((p) => NUMBER.test(p))) return undefined;
  const ns = parts.map(Number);
  return ns.every((n) => n >= lo && n <= hi) ? ns : undefined;
}

/** `1,5` or `mon-fri` → day indexes; undefined for anything else. */
function weekdays(field: string): number[] | undefined {
  const out: number[] = [];
  for (const part of field.toLowerCase().split(",")) {
    const [a, b] = part.split("-");
    const day = (s: string) => {
      const i = DAY_NAMES.indexOf(s);
      if (i >= 0) return i;
      return NUMBER.test(s) && Number(s) <= 7 ? Number(s) % 7 : -1;
    };
    const from = day(a);
    const to = b === undefined ? from : day(b);
    if (from < 0 || to < 0 || to < from) return undefined;
    for (let d = from; d <= to; d++) out.push(d);
  }
  return out;
}

function list(words: string[]): string {
  return words.length <= 1
    ? words.join("")
    : `${words.slice(0, -1).join(", ")} and ${words[words.length - 1]}`;
}

function ordinal(n: number): string {
  const s = n % 100 >= 11 && n % 100 <= 13
    ? "th"
    : ["th", "st", "nd", "rd"][n % 10] ?? "th";
  return `${n}${s}`;
}

/**
 * The schedule in words, "" when it has none here.
 *
 * @example
 * ```ts
 * import { cronWords } from "./cron_words.ts";
 * if (cronWords("0 3 * * *") !== "Every day at 03:00 UTC") throw new Error();
 * ```
 */
export function cronWords(schedule: string): string {
  const text = schedule.trim();
  if (text === "") return "Off: no scheduled backups";
  if (text.startsWith("@")) return NICKNAMES[text.toLowerCase()] ?? "";
  let fields = text.split(/\s+/);
  if (fields.length === 6) {
    if (fields[0] !== "0") return "";
    fields = fields.slice(1);
  }
  if (fields.length !== 5) return "";
  const [min, hour, dom, mon, dow] = fields;
  if (mon !== "*") return "";
  const every = /^\*\/(\d{1,2})$/;
  const stepMin = every.exec(min);
  if (stepMin && hour === "*" && dom === "*" && dow === "*") {
    const n = Number(stepMin[1]);
    return n === 1 ? "Every minute" : `Every ${n} minutes`;
  }
  const minutes = numbers(min, 0, 59);
  if (!minutes || minutes.length !== 1) return "";
  const m = minutes[0];
  let when: string;
  const stepHour = every.exec(hour);
  if (hour === "*") {
    when = m === 0 ? "Every hour, on the hour" : `Every hour at minute ${m}`;
    return dom === "*" && dow === "*" ? when : "";
  } else if (stepHour) {
    const n = Number(stepHour[1]);
    if (dom !== "*" || dow !== "*") return "";
    return `Every ${n} hours (from 00:${pad(m)} UTC)`;
  } else {
    const hours = numbers(hour, 0, 23);
    if (!hours) return "";
    when = `at ${list(hours.map((h) => `${pad(h)}:${pad(m)}`))} UTC`;
  }
  if (dom === "*" && dow === "*") return `Every day ${when}`;
  if (dom === "*") {
    const days = weekdays(dow);
    if (!days) return "";
    const set = [...new Set(days)].sort();
    if (set.join() === "1,2,3,4,5") return `Every weekday ${when}`;
    return `Every ${list(set.map((d) => DAYS[d]))} ${when}`;
  }
  if (dow === "*") {
    const days = numbers(dom, 1, 31);
    if (!days) return "";
    return `On the ${list(days.map(ordinal))} of every month ${when}`;
  }
  return "";
}
