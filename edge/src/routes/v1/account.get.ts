import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { AccountResponse } from '@rcpt/shared/contract/api';
import type { AppEnv } from '../../app-env.ts';
import { requireScope } from '../../middleware/auth.ts';
import { quotasOf, utcDayStart } from '../../services/money/quotas.ts';
import { accountSettingsOf } from '../../storage/account-settings.ts';
import { accountUsage, findAccount } from '../../storage/accounts.ts';
import { storageUseOf } from '../../storage/storage-budget.ts';
import { AUTHENTICATED_ERRORS, errorResponses, jsonReply } from '../openapi-errors.ts';

const route = createRoute({
  method: 'get',
  path: '/api/v1/account',
  tags: ['Account'],
  summary: 'The account: balance, settings and usage',
  security: [{ ApiKeyAuth: [] }],
  middleware: [requireScope(['read'])] as const,
  responses: {
    200: jsonReply('The account.', AccountResponse),
    ...errorResponses(AUTHENTICATED_ERRORS),
  },
});

export function registerAccount(app: OpenAPIHono<AppEnv>): void {
  app.openapi(route, async (c) => {
    const { accountId } = c.get('caller');
    const day = utcDayStart(Date.now());
    const [account, usage, storageUsed] = await Promise.all([
      findAccount(c.get('db'), accountId),
      accountUsage(c.get('db'), accountId),
      storageUseOf(c.get('db'), accountId, day, quotasOf(c.get('config')).storage),
    ]);
    if (!account) throw new Error(`authenticated account ${accountId} does not exist`);
    return c.json(
      {
        success: true as const,
        account: {
          id: account.id,
          email: account.email,
          creditsRemaining: account.creditBalance,
          createdAt: new Date(account.createdAt).toISOString(),
          settings: accountSettingsOf({
            recheck: account.recheckDefault,
            watch: account.watchDefault,
            sharedFleetFallback: account.sharedFleetFallback,
          }),
          usage: {
            ...usage,
            storage: {
              usedBytesToday: storageUsed.usedBytes,
              limitBytesPerDay: storageUsed.limitBytes,
              resetAt: new Date(day + 86_400_000).toISOString(),
            },
          },
        },
      },
      200,
    );
  });
}
