/**
 * A mistake on the command line (a missing argument, an unknown action):
 * main.ts prints it with the usage text.
 *
 * @module
 */

/** A command-line mistake; its message says what is missing. */
export class UsageMistake extends Error {}
