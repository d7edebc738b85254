// The files `rcpt mcp` may touch. Its paths come from a language model, and a model that has read
// untrusted text (a web page, an email, a CSV cell) can be steered by it ("prompt injection"): so
// clean_csv reads and writes only `.csv` files under one root directory chosen when the server
// starts, resolves every symlink before deciding (a link inside the root that leads out of it is
// refused), and replaces an existing file only when the call says `overwrite: true`. Writes open
// with O_NOFOLLOW, so a link put in place between the check and the write is not followed either.
import { constants } from 'node:fs';
import { lstat, open, realpath } from 'node:fs/promises';
import { basename, dirname, extname, isAbsolute, join, relative, resolve, sep } from 'node:path';

/** A path the tool refuses; its message is what the model reads. */
export class FileRefusedError extends Error {}

export class McpFiles {
  /** The root with its own symlinks resolved: every path is compared with this one. */
  readonly root: string;

  private constructor(root: string) {
    this.root = root;
  }

  /** The confinement of `root` (the server's working directory when the operator names none). */
  static async under(root: string): Promise<McpFiles> {
    return new McpFiles(await realpath(resolve(root)));
  }

  /** An existing `.csv` file under the root, by its real path. */
  async input(given: string): Promise<string> {
    const real = await realpath(this.lexical(given));
    this.requireInside(real, given, 'leads out of');
    requireCsv(real, given);
    return real;
  }

  /**
   * Where to write a `.csv` file under the root: a new file, or an existing regular file when
   * `overwrite` is set. Never a symlink, and never `input` (it would be lost).
   */
  async output(given: string, options: { overwrite: boolean; input: string }): Promise<string> {
    const { overwrite, input } = options;
    const path = this.lexical(given);
    const folder = await realpath(dirname(path));
    if (folder !== this.root) this.requireInside(folder, given, 'is in a folder that leads out of');
    const target = join(folder, basename(path));
    if (target === input) throw new FileRefusedError('output must not be the input file: it would be lost');
    const existing = await lstat(target).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return null;
      throw error;
    });
    if (existing?.isSymbolicLink())
      throw new FileRefusedError(`${given} is a symlink; clean_csv does not write through links`);
    if (existing && !existing.isFile()) throw new FileRefusedError(`${given} exists and is not a file`);
    if (existing && !overwrite)
      throw new FileRefusedError(
        `${given} exists; pass overwrite: true to replace it, or choose another output`,
      );
    return target;
  }

  /** Writes `text` to a path `output` returned, creating it unless `overwrite` allowed replacing it. */
  async write(path: string, text: string, overwrite: boolean): Promise<void> {
    const flags =
      constants.O_WRONLY |
      constants.O_CREAT |
      constants.O_NOFOLLOW |
      (overwrite ? constants.O_TRUNC : constants.O_EXCL);
    const file = await open(path, flags, 0o644);
    try {
      await file.writeFile(text);
    } finally {
      await file.close();
    }
  }

  /** `given` against the root, before any link is followed; `~` is refused, not expanded. */
  private lexical(given: string): string {
    if (given.startsWith('~'))
      throw new FileRefusedError(`${given}: "~" is not expanded; paths are relative to ${this.root}`);
    const path = resolve(this.root, given);
    this.requireInside(path, given, 'is outside');
    requireCsv(path, given);
    return path;
  }

  private requireInside(path: string, given: string, how: string): void {
    const fromRoot = relative(this.root, path);
    if (fromRoot === '' || fromRoot.split(sep)[0] === '..' || isAbsolute(fromRoot))
      throw new FileRefusedError(`${given} ${how} the folder this server may use (${this.root})`);
  }
}

function requireCsv(path: string, given: string): void {
  if (extname(path).toLowerCase() !== '.csv')
    throw new FileRefusedError(`${given}: clean_csv reads and writes .csv files only`);
}
