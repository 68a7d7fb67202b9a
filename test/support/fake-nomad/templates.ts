import { renderTemplate, TemplateExecuteError, TemplateUnsupported, type VariableLookup } from '../upstream/consul-template-render.js';
import { EnvParseError, parseEnvFile } from '../upstream/go-envparse.js';

type Json = Record<string, any>;

export type TemplateOutcome = { env: Record<string, string> } | { failure: string } | { stopped: true };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A task's templates as Nomad's template hook plays them before the task starts
 * (client/allocrunner/taskrunner/template/template.go): every template is rendered by
 * consul-template, waiting while a Variable it reads does not exist (`handleFirstRender`);
 * then each `Envvars` one is read with go-envparse (`loadTemplateEnv`), later templates
 * overriding earlier ones. A render or parse error is the message of the event that kills
 * the task; a template this port does not know fails the task too, saying so.
 */
export async function renderTaskTemplates(task: Json, lookup: VariableLookup, stopped: () => boolean): Promise<TemplateOutcome> {
  const files: { template: Json; output: Buffer }[] = [];
  for (const template of (task.Templates ?? []) as Json[]) {
    for (;;) {
      if (stopped()) return { stopped: true };
      let rendered;
      try {
        rendered = renderTemplate(String(template.EmbeddedTmpl ?? ''), lookup);
      } catch (error) {
        if (error instanceof TemplateExecuteError) return { failure: `Template failed: ${error.message}` };
        if (error instanceof TemplateUnsupported) return { failure: `Template failed: the fake cannot render it (${error.message})` };
        throw error;
      }
      if (rendered.missing.length === 0) {
        files.push({ template, output: rendered.output });
        break;
      }
      await sleep(200);
    }
  }
  const env: Record<string, string> = {};
  for (const { template, output } of files) {
    if (!template.Envvars) continue;
    try {
      Object.assign(env, Object.fromEntries(parseEnvFile(output)));
    } catch (error) {
      if (!(error instanceof EnvParseError)) throw error;
      // Nomad names the file by its path on the client (the alloc dir); the fake by the task's.
      const message = `error parsing env template "${task.Name}/${template.DestPath}": ${error.message}`;
      return { failure: `Template failed to read environment variables: ${message}` };
    }
  }
  return { env };
}
