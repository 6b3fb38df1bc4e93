// `svc-gateway`: the gateway's command line. Parses argv and calls into gateway/.
import { Command } from "commander";

const program = new Command("svc-gateway")
  .description("svc gateway: OpenAI-compatible routes in front of attested provider machines")
  .showHelpAfterError();

program
  .command("serve")
  .description("serve the OpenAI routes (not built yet)")
  .allowUnknownOption()
  .action(() => {
    console.error("svc-gateway: the gateway is not built yet; see the README for what works today");
    process.exitCode = 1;
  });

await program.parseAsync();
