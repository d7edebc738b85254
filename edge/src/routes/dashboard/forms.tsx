/** @jsxImportSource hono/jsx */
// Form pieces every page uses: the CSRF field, labelled inputs, notices, and reading fields.
import type { Context } from 'hono';
import type { Child } from 'hono/jsx';

export function CsrfField(props: { token: string }) {
  return <input type="hidden" name="_csrf" value={props.token} />;
}

export interface TextFieldProps {
  id: string;
  name: string;
  label: string;
  type?: 'text' | 'email' | 'password' | 'url' | 'search' | 'date' | 'number';
  value?: string | undefined;
  autocomplete?: string;
  required?: boolean;
  minlength?: number;
  maxlength?: number;
  /** The bounds of a `number` field, which is typed on a numeric keypad. */
  min?: number;
  max?: number;
  placeholder?: string;
  hint?: Child;
  /** Shown under the field and announced with it. */
  error?: string | null | undefined;
}

export function TextField(props: TextFieldProps) {
  return (
    <div class="field">
      <label for={props.id}>{props.label}</label>
      <input
        id={props.id}
        name={props.name}
        type={props.type ?? 'text'}
        value={props.value}
        autocomplete={props.autocomplete}
        required={props.required}
        minlength={props.minlength}
        maxlength={props.maxlength}
        min={props.min}
        max={props.max}
        inputmode={props.type === 'number' ? 'numeric' : undefined}
        placeholder={props.placeholder}
        {...describedBy(props)}
      />
      <FieldNotes id={props.id} hint={props.hint} error={props.error} />
    </div>
  );
}

/** A labelled choice of `options` (value and label), with TextField's hint and error. */
export function SelectField(props: {
  id: string;
  name: string;
  label: string;
  options: readonly { value: string; label: string }[];
  value?: string | undefined;
  hint?: Child;
  error?: string | null | undefined;
}) {
  return (
    <div class="field">
      <label for={props.id}>{props.label}</label>
      <select id={props.id} name={props.name} {...describedBy(props)}>
        {props.options.map((option) => (
          <option value={option.value} selected={option.value === (props.value ?? '')}>
            {option.label}
          </option>
        ))}
      </select>
      <FieldNotes id={props.id} hint={props.hint} error={props.error} />
    </div>
  );
}

/** A field's ARIA link to its hint and error (FieldNotes gives them these ids), and its invalid state. */
function describedBy(props: { id: string; hint?: Child; error?: string | null | undefined }) {
  const ids = [props.hint ? `${props.id}-hint` : null, props.error ? `${props.id}-error` : null];
  return {
    'aria-describedby': ids.filter(Boolean).join(' ') || undefined,
    'aria-invalid': props.error ? ('true' as const) : undefined,
  };
}

/** A field's hint and its error, with the ids its `aria-describedby` names. */
function FieldNotes(props: { id: string; hint?: Child; error?: string | null | undefined }) {
  return (
    <>
      {props.hint ? (
        <p class="hint" id={`${props.id}-hint`}>
          {props.hint}
        </p>
      ) : null}
      {props.error ? (
        <p class="field-error" id={`${props.id}-error`}>
          {props.error}
        </p>
      ) : null}
    </>
  );
}

/**
 * A labelled file input, with TextField's hint. `dropzone` makes the field the area a file may be
 * dropped on (app.js enhances it); without script it is a plain file input.
 */
export function FileField(props: {
  id: string;
  name: string;
  label: string;
  accept: string;
  required?: boolean;
  dropzone?: boolean;
  hint: Child;
}) {
  return (
    <div class={props.dropzone ? 'dropzone' : 'field'} data-dropzone={props.dropzone}>
      <label for={props.id}>{props.label}</label>
      <input
        id={props.id}
        name={props.name}
        type="file"
        accept={props.accept}
        required={props.required}
        {...describedBy(props)}
      />
      <FieldNotes id={props.id} hint={props.hint} />
    </div>
  );
}

/** The look of a form's button: the main action, a lesser one, a destructive one, or a link. */
const BUTTON_CLASSES = {
  primary: 'button',
  secondary: 'button button-secondary',
  danger: 'button button-danger',
  link: 'button-link',
} as const;

/** A form's submit button. */
export function SubmitButton(props: {
  kind?: keyof typeof BUTTON_CLASSES;
  disabled?: boolean;
  /** The accessible name, when the visible text alone does not say what it acts on. */
  label?: string;
  /** The id of a note that says why the button is disabled. */
  describedBy?: string | undefined;
  children: Child;
}) {
  return (
    <button
      type="submit"
      class={BUTTON_CLASSES[props.kind ?? 'primary']}
      disabled={props.disabled}
      aria-label={props.label}
      aria-describedby={props.describedBy}
    >
      {props.children}
    </button>
  );
}

/** A labelled multi-line field (lists typed one per line), with TextField's hint and error. */
export function TextAreaField(props: {
  id: string;
  name: string;
  label: string;
  value?: string | undefined;
  rows?: number;
  required?: boolean;
  hint?: Child;
  error?: string | null | undefined;
}) {
  return (
    <div class="field">
      <label for={props.id}>{props.label}</label>
      <textarea
        id={props.id}
        name={props.name}
        rows={props.rows ?? 3}
        required={props.required}
        spellcheck={false}
        {...describedBy(props)}
      >
        {props.value ?? ''}
      </textarea>
      <FieldNotes id={props.id} hint={props.hint} error={props.error} />
    </div>
  );
}

/** The email address that names an account (sign-in, sign-up, password reset). */
export function AccountEmailField(props: { id: string; value?: string | undefined }) {
  return (
    <TextField
      id={props.id}
      name="email"
      label="Email"
      type="email"
      autocomplete="username"
      required
      value={props.value}
    />
  );
}

/** A one-checkbox setting of the account, saved on its own (the value sent when ticked is `true`). */
export function SettingForm(props: {
  action: string;
  csrfToken: string;
  name: string;
  checked: boolean;
  label: string;
}) {
  return (
    <form method="post" action={props.action} class="stack">
      <CsrfField token={props.csrfToken} />
      <label class="checkbox">
        <input type="checkbox" name={props.name} value="true" checked={props.checked} /> {props.label}
      </label>
      <SubmitButton kind="secondary">Save</SubmitButton>
    </form>
  );
}

/**
 * A secret shown once (a new key, token or signing secret): read-only and selectable, with a
 * copy button that app.js reveals; without JavaScript the field is selected and copied by hand.
 */
export function SecretField(props: { id: string; label: string; secret: string }) {
  return (
    <div class="field">
      <label for={props.id}>{props.label}</label>
      <div class="copy-row">
        <input
          id={props.id}
          class="secret"
          type="text"
          readonly
          value={props.secret}
          spellcheck={false}
          autocomplete="off"
        />
        <button type="button" class="button button-secondary" data-copy-target={props.id} hidden>
          Copy
        </button>
      </div>
    </div>
  );
}

export function Notice(props: { kind: 'success' | 'error' | 'info'; children?: Child }) {
  // Errors interrupt (alert); confirmations are announced politely (status).
  return (
    <div class={`notice notice-${props.kind}`} role={props.kind === 'error' ? 'alert' : 'status'}>
      {props.children}
    </div>
  );
}

/** A text field of the posted form ('' when absent or a file). */
export async function formText(c: Context, name: string): Promise<string> {
  const value = (await c.req.formData()).get(name);
  return typeof value === 'string' ? value : '';
}

/** A date and time as people read it, in UTC, inside a machine-readable <time>. */
export function Timestamp(props: { at: number | null; empty?: string }) {
  if (props.at === null) return <span class="muted">{props.empty ?? '—'}</span>;
  const iso = new Date(props.at).toISOString();
  return <time datetime={iso}>{`${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`}</time>;
}
