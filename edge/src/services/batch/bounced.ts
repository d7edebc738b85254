// A list's addresses that the account's own send hard-bounced on a mailbox reason are answered
// from that bounce, as its single calls are (docs/verdicts.md, "Learning from outcomes"): the
// consumer takes them out of the work it hands the hub, so no SMTP session asks the mail server
// about a mailbox the account already knows is gone. Jobs are live keys' (a test key's list is
// answered in the sandbox at upload), so live outcomes are the ones that count.
import type { MailboxBounce } from '@rcpt/shared/verify/learnt';
import type { Db } from '../../storage/db.ts';
import { liveMailboxBounces } from '../../storage/outcomes.ts';
import type { BatchTask, SettledTask } from './types.ts';

/**
 * `tasks` split into the addresses the accounts' bounces answer (settled now, with no probe) and
 * the work still to probe. One round trip to D1 per account of the tasks.
 */
export async function answerBounced(
  db: Db,
  tasks: readonly BatchTask[],
): Promise<{ answered: SettledTask[]; toProbe: BatchTask[] }> {
  const emailsByAccount = new Map<string, string[]>();
  for (const task of tasks) {
    const emails = emailsByAccount.get(task.accountId) ?? [];
    for (const address of task.addresses) emails.push(address.email);
    emailsByAccount.set(task.accountId, emails);
  }
  const bouncesByAccount = new Map<string, Map<string, MailboxBounce>>();
  for (const [accountId, emails] of emailsByAccount) {
    bouncesByAccount.set(accountId, await liveMailboxBounces(db, accountId, emails));
  }
  const answered: SettledTask[] = [];
  const toProbe: BatchTask[] = [];
  for (const task of tasks) {
    const bounces = bouncesByAccount.get(task.accountId);
    const bounced = task.addresses.filter((address) => bounces?.has(address.email));
    if (bounced.length === 0 || !bounces) {
      toProbe.push(task);
      continue;
    }
    answered.push({ task: { ...task, addresses: bounced }, probe: { kind: 'skipped' }, bounces });
    const rest = task.addresses.filter((address) => !bounces.has(address.email));
    if (rest.length > 0) toProbe.push({ ...task, addresses: rest });
  }
  return { answered, toProbe };
}
