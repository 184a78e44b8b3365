// The globs of team rules and rate limits: `*` any run of characters, `?` one character.

/** A glob: `*` any run of characters, `?` one character; everything else literal. */
export function globToRegExp(glob: string): RegExp {
  const body = glob.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  return new RegExp(`^${body}$`, 's');
}
