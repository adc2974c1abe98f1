/** The group requests (PUT /v1/groups/{key}): the key from the path and the body `{ version }`. */
import { guarded, PARSE_CONTEXT, type Validated, zodErrors } from './problem.js';
import { GroupKeySchema, GroupVersionBodySchema } from './requestSchemas.js';

export interface GroupVersionRequest {
  readonly version: number;
}

/** Validates a group version body `{ version }`. Never throws. */
export function validateGroupVersionRequest(body: unknown): Validated<GroupVersionRequest> {
  return guarded(() => {
    const parsed = GroupVersionBodySchema.safeParse(body, PARSE_CONTEXT);
    if (!parsed.success) return { ok: false, errors: zodErrors(parsed.error) };
    return { ok: true, value: { version: parsed.data.version } };
  });
}

/** Validates a group key taken from a URL path (its one error names the parameter, `key`). Never throws. */
export function validateGroupKey(key: string): Validated<string> {
  return guarded(() => {
    const parsed = GroupKeySchema.safeParse(key, PARSE_CONTEXT);
    if (!parsed.success) {
      return {
        ok: false,
        errors: [{ field: 'key', message: parsed.error.issues[0]?.message ?? 'is invalid' }],
      };
    }
    return { ok: true, value: parsed.data };
  });
}
