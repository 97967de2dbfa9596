"""Values printed in the paper (Lawrence, Malmsten, Rybka, Sabol, Triplin, "Comparing
TensorFlow Deep Learning Performance Using CPUs, GPUs, Local PCs and Cloud", Pace University,
2017), drawn beside our measurements and always labelled as the paper's."""

#: Training time of the paper's workload (49,024 training images x 20 epochs), minutes.
TRAINING_MINUTES = {"2-core laptop": 309.0, "4-core desktop": 134.0}
#: The paper's workload behind those times.
TRAIN_IMAGES = 49_024
EPOCHS = 20
#: Test accuracy reported after about 20 epochs.
TEST_ACCURACY = 0.85
#: Parameter count as printed in the paper's text (its sum drops the last 4 biases).
PARAMETERS_PRINTED = 16_832_432
#: The paper's estimate of memory per image, MB (drawn beside our peak memory / batch size).
MEMORY_MB_PER_IMAGE = 83.0
#: Names of the paper's systems, for a target's ``paper_system``.
SYSTEMS = [
    "2-core laptop",
    "4-core desktop",
    "GTX 980 Ti",
    "cloud K80, 1 vCPU",
    "cloud K80, 8 vCPUs",
    "cloud 2x K80",
]
