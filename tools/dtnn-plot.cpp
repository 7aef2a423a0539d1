// dtnn-plot: training runs' loss, accuracy and learning rate per epoch, from their dtnn-run
// --metrics files, drawn as SVG or PNG (tools/plot).
namespace dtnn::plot {
int plotMain(int argc, char **argv);
}

int main(int argc, char **argv) { return dtnn::plot::plotMain(argc, argv); }
