// A new dashboard account made in the browser as a person makes one: the sign-up form signs the
// account in at once; its free credits wait for the emailed link, which the edge prints.
import type { Page } from 'playwright-core';
import type { System } from '../harness.ts';

/** Signs `email` up in `page`: the page is then the new account's overview. */
export async function signUp(page: Page, email: string, password: string): Promise<void> {
  await page.goto('/signup');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Create account' }).click();
  await page.waitForURL('**/?welcome=1');
}

/** Signs `email` up and follows its confirmation link: signed in, with the free credits. */
export async function signUpAndConfirm(
  page: Page,
  system: System,
  email: string,
  password: string,
): Promise<void> {
  await signUp(page, email, password);
  await page.goto(await system.confirmationLink(email));
  await page.waitForURL('**/?email-confirmed=new');
}
