/** @jsxImportSource hono/jsx */
// A key's name, secret or publishable: the one rule it follows and its form field.
import { TextField } from './forms.tsx';

const MAX_KEY_NAME = 100;

/** What is wrong with a key's name as typed (already trimmed), or null when it will do. */
export function keyNameProblem(name: string): string | null {
  if (name === '') return 'Give the key a name.';
  return name.length > MAX_KEY_NAME ? `Use at most ${MAX_KEY_NAME} characters.` : null;
}

/** The name field of a key form; `hint` says what a good name is for this kind of key. */
export function KeyNameField(props: {
  id: string;
  value: string | undefined;
  hint: string;
  error: string | null | undefined;
}) {
  return (
    <TextField
      id={props.id}
      name="name"
      label="Name"
      required
      maxlength={MAX_KEY_NAME}
      value={props.value}
      hint={props.hint}
      error={props.error}
    />
  );
}
